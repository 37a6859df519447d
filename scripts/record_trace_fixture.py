"""Records a real torch.profiler Chrome trace for the parser tests (run on a GPU machine).

    python scripts/record_trace_fixture.py OUT_DIR

Five calls, each a record_function("gpubench::call") range holding two kernels
(a matmul and an add), each preceded by an L2 flush (a sum) outside the range:
the shape the cupti timer profiles. Written gzipped as cupti_calls_trace.json.gz.
Then the same for a torch.sort of 2^20 floats (7 kernels, memsets and a copy per call,
range "gpubench::work", as timers/device_work.py profiles it): sort_calls_trace.json.gz.
"""

import gzip
import shutil
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function


def record(out: Path, name: str, call, flush, sink, range_name: str) -> None:
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            torch.sum(flush, dim=0, out=sink)
            with record_function(range_name):
                call()
        torch.cuda.synchronize()
    out.mkdir(parents=True, exist_ok=True)
    plain = out / f"{name}.json"
    prof.export_chrome_trace(str(plain))
    with open(plain, "rb") as src, gzip.open(out / f"{name}.json.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    plain.unlink()
    print(prof.key_averages().table(sort_by="self_device_time_total", row_limit=8))


def main(out: Path) -> None:
    a = torch.randn(1024, 1024, device="cuda")
    b = torch.randn(1024, 1024, device="cuda")
    c = torch.empty_like(a)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush, sink = torch.ones(2 * l2 // 4, device="cuda"), torch.empty((), device="cuda")

    def matmul_and_add():
        torch.matmul(a, b, out=c)
        torch.add(a, b, out=c)

    record(out, "cupti_calls_trace", matmul_and_add, flush, sink, "gpubench::call")
    values = torch.randn(1 << 20, device="cuda")
    record(out, "sort_calls_trace", lambda: torch.sort(values), flush, sink, "gpubench::work")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
