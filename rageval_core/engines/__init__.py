"""Distributed engines that run rageval_core.engines.partition's functions (docs/scale-out.md).

Each engine module imports its engine only inside its functions: `rageval --help` and the local
path never load it, and a core install without the engine's extra imports the module fine.
"""
