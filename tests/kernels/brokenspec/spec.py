"""brokenspec: a spec that fails to import (a typo on line 6)."""

import torch

family = Famly(reference=lambda x: x, make_inputs=torch.randn)  # noqa: F821
