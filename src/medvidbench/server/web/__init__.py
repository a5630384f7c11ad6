"""The web layer: pages, REST API, static files. ``create_app(runtime)`` builds the app."""
