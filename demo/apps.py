from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The embedded demo: drawn stand-in images, seeded labels and scores, demo logins, run_demo.
    The top app: it may use every other app, and none uses it."""

    name = "demo"
