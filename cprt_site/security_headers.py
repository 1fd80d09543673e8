"""Security headers and cookie flags that hold in every environment (imported by cprt_site/settings.py,
where the HTTPS settings that depend on DEBUG stay)."""

SESSION_COOKIE_HTTPONLY = True
# Content Security Policy (django-csp): no inline or third-party script anywhere. Inline style
# *attributes* are allowed (progress-bar widths, SVG plots); style sheets come only from us.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# /healthz, /readyz and /metrics answer over plain HTTP too (probes inside the compose network).
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
