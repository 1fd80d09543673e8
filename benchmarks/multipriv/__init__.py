"""MultiPriv, individual level (spec vispr-and-benchmarks.md §5): persons, their images by privacy
category, and their synthetic profiles, imported from the user's copy of the release.

The data are licensed CC BY-NC-SA: imported by the user, never shipped. Their images are not CPRT
images: they are stored apart (`PersonImage`), never enter the labeling queue, run selections or
exports, and are served to admins only.
"""
