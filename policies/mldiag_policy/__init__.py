"""The ml-diagnostics policy pack as a package: `compat` (the version rules from the vendor docs, pure
Python, also read by the program's components), `values` (plain views of the inputs), `forms` (every
resource form mapped to one checked shape), `common` (how rules are built and run), `rules/` (the policies)
and `pack` (the list the PolicyPack is built from).

Nothing is imported here, so `policies.mldiag_policy.compat` loads without pulumi_policy.
"""
