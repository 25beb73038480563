"""Dynamic providers and the shared Google REST client.

Module paths under this package are pickled into Pulumi state with the provider objects: do not move them
(the homes before the library, `components.providers.*`, stay importable: components/providers/).
"""
