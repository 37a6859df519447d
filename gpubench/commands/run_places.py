"""Where `gpubench run`'s points run: the one default worker, --devices (a worker per
GPU), --workers (CPU workers), or --cluster (Dask workers, a local cluster included):
which combinations mean something, and the lanes each gives. RunCommand (run.py) and the
watch loop hold one, built from the request."""

from __future__ import annotations

from pathlib import Path

from gpubench import errors
from gpubench.run.cluster.early import EarlyCluster, shape_of
from gpubench.run.lanes.lane import choose_gpus, visible_gpus


class RunPlaces:
    """The places a run's points go, as its request asks."""

    def __init__(self, request):
        self.request = request

    def check_parallel_options(self) -> None:
        """--devices, --workers and --cluster: the combinations that mean something."""
        if self.request.devices and self.request.workers:
            raise errors.UsageError("--devices (one worker per GPU) and --workers (CPU "
                                    "workers) exclude each other")
        if self.request.devices and self.request.device == "cpu":
            raise errors.UsageError("--devices picks GPUs; with --device cpu use --workers N")
        if self.request.devices and self.request.cluster and self.request.cluster != "local":
            raise errors.UsageError("--devices picks this machine's GPUs: with a remote "
                                    "--cluster each Dask worker owns its GPU")
        if self.request.workers and self.request.cluster and self.request.cluster != "local":
            raise errors.UsageError("--workers sizes a local cluster; a remote --cluster "
                                    "has the workers it was started with")

    def cluster_machine(self, cluster):
        """The cluster's workers decide what runs (this machine may have no GPU)."""
        from gpubench.families.spec import Machine

        facts = cluster.machine_facts()
        if self.request.device == "cuda" and not facts["has_cuda"]:
            raise errors.EnvironmentProblem(f"--device cuda: the workers of --cluster "
                                            f"{self.request.cluster} see no CUDA GPU")
        use_cuda = facts["has_cuda"] and self.request.device != "cpu"
        return Machine(has_cuda=use_cuda, has_triton=facts["has_triton"],
                       device_name="cuda" if use_cuda else "cpu")

    def local_cluster(self, machine, run_dir: Path, early: EarlyCluster | None = None):
        """`--cluster local`: one Dask worker per GPU (those of --devices, else all), or
        --workers CPU workers (2 by default); their logs go to the run folder. The one
        started early is taken when it is this one."""
        from gpubench.run.cluster.lanes import Cluster

        if machine.has_cuda and self.request.workers:
            raise errors.UsageError("--cluster local on a GPU has one worker per GPU "
                                    "(pick them with --devices); --workers sizes a "
                                    "CPU cluster")
        if machine.has_cuda or self.request.devices:
            gpus = self.chosen_gpus(machine)
            started = early.take(shape_of(gpus, 0)) if early else None
            return started or Cluster("local", "cuda", gpus, log_dir=run_dir)
        workers = self.request.workers or 2
        started = early.take(shape_of([], workers)) if early else None
        return started or Cluster("local", "cpu", cpu_workers=workers, log_dir=run_dir)

    def chosen_gpus(self, machine) -> list[str]:
        """--devices (all when not given) as GPU ids; a CPU run (no GPU, or --device cpu)
        cannot have any."""
        if not machine.has_cuda:
            raise errors.UsageError("--devices needs CUDA GPUs and this run has none (for "
                                    "parallel CPU workers use --workers N)")
        return choose_gpus(self.request.devices or "all", visible_gpus())

    def lanes_for(self, machine, run_dir: Path, cluster) -> list | None:
        """The places points run: None for the one default worker."""
        from gpubench.run.lanes.lane import Lane, Slot, cpu_slots

        if cluster is not None:
            return cluster.lanes()
        if self.request.devices:
            return [Lane(Slot("cuda", f"cuda:{gpu}", visible=gpu), run_dir, f"worker-cuda{gpu}")
                    for gpu in self.chosen_gpus(machine)]
        if self.request.workers:
            if machine.has_cuda:
                raise errors.UsageError("--workers runs CPU workers; on a GPU machine use "
                                        "--devices (one worker per GPU), or --device cpu")
            return [Lane(slot, run_dir, f"worker-cpu{slot.label[4:]}")
                    for slot in cpu_slots(self.request.workers)]
        return None
