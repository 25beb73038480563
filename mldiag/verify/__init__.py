"""Post-deploy verification: `mldiag verify STACK` checks, with read-only calls, that what the
vendor docs verify by hand actually holds on every target of a stack (see cli.py and README
"After `pulumi up`")."""
