/.venv
/dist
__pycache__/
