"""Browser journeys (Playwright in Debian's Chromium)."""
