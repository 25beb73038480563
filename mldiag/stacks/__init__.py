"""Stack files offline: new stacks, their secrets (passphrase provider), the policy config of a stack and
the `pulumi import --file` document of its adopted parts."""
