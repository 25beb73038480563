"""What the offline plan and diff render from a plan report: tables, Markdown, the resource graph (Mermaid,
DOT). Shared by `mldiag plan` and `mldiag diff`, below both."""
