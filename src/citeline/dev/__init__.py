"""Tools for developing citeline itself (`make lint` runs them); nothing here runs in the product."""
