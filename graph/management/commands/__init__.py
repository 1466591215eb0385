"""``manage.py`` commands of the graph app: each calls a graph service (the same one REST, admin
and tasks call). Must not live here: writes of their own, or measurements (those are ``bench/``
scripts).
"""
