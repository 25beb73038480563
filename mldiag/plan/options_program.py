"""The real program with a stack transformation that records every resource's declared options.

Run as a program (run_name `__main__`) by `mldiag.plan.import_file.run_with_options` under the offline plan's mock
runtime; importing it does nothing.
"""

import runpy

import pulumi


def main() -> None:
    from mldiag.engine.runtime import ROOT
    from mldiag.plan import import_file

    pulumi.runtime.register_stack_transformation(import_file.record)
    runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")


if __name__ == "__main__":
    main()
