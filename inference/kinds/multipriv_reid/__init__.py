from .kind import MultiprivReidKind

__all__ = ["MultiprivReidKind"]
