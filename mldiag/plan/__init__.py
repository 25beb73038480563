"""`mldiag plan`: the offline plan of a stack (cli), its report renderers and its graph."""
