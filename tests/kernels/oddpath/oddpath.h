// oddpath.h: found through the family folder's -I path, which ninja must be able to read.
#pragma once

constexpr float kOddpathOffset = 1.0f;
