"""Signals of kb's own.

``rows_written`` is sent once for every set-wise write of an audited model (import by COPY,
set-wise merge, delete, split and revert): the writes that bypass ``save()`` and so Django's
``post_save``. Receivers that keep derived state fresh (workflow reports, layouts) listen to
both. Sent by :func:`kb.history_rows.record_rows`, the one place every set-wise write stamps
its history rows; ``ids`` are the primary keys written, ``change`` is ``+``, ``~`` or ``-``.
"""

from django.dispatch import Signal

rows_written = Signal()  # sender: the model; kwargs: ids, change, using
