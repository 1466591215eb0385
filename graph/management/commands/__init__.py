"""``manage.py`` commands of the graph app: each calls a graph service (the same one REST, admin
and tasks call). Measurements are not commands: they are ``bench/`` scripts."""
