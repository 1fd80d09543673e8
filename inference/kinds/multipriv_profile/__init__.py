from .kind import MultiprivProfileKind

__all__ = ["MultiprivProfileKind"]
