"""Persistence: SQLAlchemy tables, engines and Alembic migrations."""
