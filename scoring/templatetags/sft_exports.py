"""{% sft_export_form %}: the SFT export form on the exports page, bound when a launch was refused."""
from django import template

register = template.Library()


@register.inclusion_tag("scoring/_sft_export_form.html", takes_context=True)
def sft_export_form(context):
    from scoring.sft.forms import SFTExportForm

    return {"sft_form": context.get("sft_form") or SFTExportForm(), "csrf_token": context.get("csrf_token")}
