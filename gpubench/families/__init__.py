"""What a kernel family is and how its variants are called: the declarative spec, finding
family folders, the correctness check, calling a variant, the side effects it may not have,
and the modules a family takes as ground truth (trusted.py: sealed before variant code runs)."""
