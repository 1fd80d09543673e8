"""Template filters about run kinds (inference.kinds): `{{ run.task|kind_label }}` names a run's kind."""
from django import template

from inference import kinds

register = template.Library()


@register.filter
def kind_label(key: str) -> str:
    """The kind's label ("judge severity"); the key itself for a kind no longer registered."""
    try:
        return kinds.get(key).label
    except ValueError:
        return key
