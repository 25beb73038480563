"""Developer tooling (docs/development.md, "Layout"): benchmarks (bench), generators (gen), the e2e harness (e2e) and the
fakes shared by tests and benchmarks (fakes). It may import the product; the product never imports it."""
