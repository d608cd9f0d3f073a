from probmed.cli import run

run()
