"""A small GPT-style training step, plain PyTorch, for `gpubench profile` (tests, README).

    gpubench profile --ncu --top 3 -- python tests/programs/gpt_train.py

Embedding, N pre-norm blocks (layernorm, causal self-attention written out — q@k^T, mask,
softmax, @v — layernorm, GELU MLP), cross-entropy, AdamW. The steps after --warmup run
inside gpubench.region("train"), so the profile leaves the first steps (cuBLAS heuristics,
allocator growth) out. Without a GPU it runs a tiny model on the CPU.
"""

import argparse
import contextlib
import math

import torch
import torch.nn.functional as F
from torch import nn

try:
    from gpubench import region
except ImportError:  # the program runs without gpubench too
    def region(name):
        return contextlib.nullcontext()


class Block(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc, self.out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        return self.proj((weights @ v).transpose(1, 2).reshape(b, t, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab: int, dim: int, layers: int, heads: int, seq: int):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, dim), nn.Embedding(seq, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tokens(idx) + self.positions(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def main() -> None:
    cuda = torch.cuda.is_available()
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=4 if cuda else 2)
    parser.add_argument("--dim", type=int, default=768 if cuda else 64)
    parser.add_argument("--heads", type=int, default=12 if cuda else 4)
    parser.add_argument("--seq", type=int, default=512 if cuda else 32)
    parser.add_argument("--batch", type=int, default=8 if cuda else 2)
    parser.add_argument("--vocab", type=int, default=16384 if cuda else 512)
    parser.add_argument("--steps", type=int, default=8 if cuda else 3)
    parser.add_argument("--warmup", type=int, default=3 if cuda else 1)
    args = parser.parse_args()
    device = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    model = GPT(args.vocab, args.dim, args.layers, args.heads, args.seq).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    data = torch.randint(args.vocab, (args.batch, args.seq + 1), device=device)
    for step in range(args.steps):
        steady = region("train") if step >= args.warmup else contextlib.nullcontext()
        with steady:
            logits = model(data[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, args.vocab), data[:, 1:].reshape(-1))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize()
    print(f"trained {args.steps} steps on {device}: loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
