"""`mldiag`, the product's command line (docs/development.md, "Layout"): the offline engine, plan, diff, verify, fleet
rollouts, stacks and their secrets. It works on this checkout's stacks/, fleet/ and policies/ and sits
above the program (program/) and the library (components/ml_diagnostics); nothing below imports it."""
