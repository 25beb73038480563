"""Specs shared by the stack config (target models) and the dynamic providers: schemas, their rules and
endpoint rules, as plain data and pydantic models. They import neither layer."""
