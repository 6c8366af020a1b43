"""The engine's version: stored with every run; a new version invalidates reused results."""

ENGINE_VERSION = "0.2.0"     # 0.2: idle gaps split along their dependency chain
