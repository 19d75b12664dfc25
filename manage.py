#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    from config.datafolder import data_folder_problem, unmigrated_problem

    problem = data_folder_problem(sys.argv)
    if problem:
        sys.stderr.write(problem + "\n")
        raise SystemExit(2)
    import django
    from django.core.management import execute_from_command_line

    django.setup()
    problem = unmigrated_problem(sys.argv)
    if problem:
        sys.stderr.write(problem + "\n")
        raise SystemExit(2)
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
