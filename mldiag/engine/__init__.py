"""The offline engine: the program under the SDK's mock runtime (runtime), the mock answers, the policy pack
driven over the analyzer protocol (analyzer), and what the plan invented (invented)."""
