"""markup_text: an error whose text looks like rich's markup and emoji codes, as a file:line
does ("square_triton.py:100:" read as the :100: emoji) and as a message may ("[bold]").
Both must be shown as written.

Napkin math: n FLOPs; 2 * n * itemsize bytes (one read, one write).
"""

import torch

from gpubench import Family, TorchVariant

MESSAGE = "at square_triton.py:100: [bold]not bold[/bold] :smile: [link=http://x]y[/link]"


def raises(x, out):
    raise ValueError(MESSAGE)


family = Family(
    reference=lambda x: 2 * x,
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device, dtype=dtype),),
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    sizes=(1024,),
    cpu_sizes=(1024,),
    variants=(
        TorchVariant("torch", fn=lambda x, out: torch.mul(x, 2, out=out), baseline=True,
                     description="[red]not red[/red] :100:"),
        TorchVariant("raises", fn=raises),
    ),
)
