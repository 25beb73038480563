"""ml-diagnostics: load and validate the stack config once, then build each target through its kind's entry
in the table (program/kinds) and export what it reports."""

import pulumi

from program import config, fleet_gate, fleet_member
from program.clouds import clouds_of
from program.kinds.base import BuildContext
from program.kinds.table import KINDS
from program.previous_deployment import PreviousDeployment


def deploy() -> None:
    cfg = config.load()
    fleet_member.one_way(cfg)  # an environment deployed by its fleet's member stacks refuses `pulumi up`
    pulumi.export("environment", cfg.environment)

    settings = {c.name: cfg.settings(c) for c in clouds_of(KINDS) if c.settings is not None}
    ctx = BuildContext(environment=cfg.environment, settings=settings, previous=PreviousDeployment())
    for kind in KINDS:
        build = kind.build.load()
        for target in cfg.targets(kind):
            pulumi.export(f"{kind.export}:{target.name}", build(target, ctx))

    # Steps a later `pulumi up` still has to take (empty when this update completes the config).
    pulumi.export(
        "pendingSteps", pulumi.Output.all(*ctx.pending_steps).apply(lambda steps: [s for s in steps if s])
    )


raw, _ = config.engine_config()
if fleet_gate.configured(raw):
    fleet_gate.main(
        raw
    )  # a fleet's wave gate (the Kubernetes operator's rollouts): verifies, deploys nothing
else:
    deploy()
