"""MultiPriv's two run kinds (registered into inference.kinds.KINDS by the declaration's `kinds`)."""
from .profile import MultiprivProfileKind
from .reid import MultiprivReidKind

__all__ = ["MultiprivProfileKind", "MultiprivReidKind"]
