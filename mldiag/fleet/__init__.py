"""Fleet rollouts in waves across the clusters of an environment: `mldiag fleet` (mldiag/fleet/cli.py).

model (the fleet file) -> planner (waves of per-cluster stacks) -> rollout (the waves, with an injected
executor: executor.py, the Pulumi Automation API) -> progress (stack tags, the lease); drift, picture,
workflow (the GitHub Actions engine) and report render the rest.
"""
