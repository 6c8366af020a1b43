"""The engine's version: stored with every run; a new version invalidates reused results."""

ENGINE_VERSION = "0.1.0"
