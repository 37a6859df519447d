"""injection: y = 2 * x, whose texts carry what must never act where they are shown.

Terminal escapes (clear the screen, set the window title, a hyperlink, a carriage return,
a right-to-left override), rich markup, HTML that ends a script element or opens a
comment, spreadsheet formulas, markdown row breakers, and a 200,000-character error.
tests/test_injection.py copies this folder under a hostile name too.

Napkin math: n FLOPs; 2 * n * itemsize bytes (one read, one write).
"""

import torch

from gpubench import Family, TorchVariant

ESCAPES = "\x1b[2J\x1b]0;owned\x07\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\\u202e"
HTML = "</script><!--<script>"
# Past Python's csv field limit (131,072) and any terminal's patience.
LONG = 200_000


def raises(x, out):
    raise ValueError(f"=1+1 {ESCAPES} {HTML} | cell " + "y" * LONG + " end\nsecond line")


family = Family(
    reference=lambda x: 2 * x,
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device, dtype=dtype),),
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    sizes=(1024,),
    cpu_sizes=(1024,),
    variants=(
        TorchVariant("torch", fn=lambda x, out: torch.mul(x, 2, out=out), baseline=True,
                     description=f"@SUM(1+9) {ESCAPES}\r [bold red]markup[/] {HTML} | x\ny"),
        TorchVariant("raises", fn=raises, description="-2+3 " + HTML),
    ),
)
