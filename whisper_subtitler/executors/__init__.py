"""Where a batch's files run: one after another in this process (``runner.run_batch``, ``--executor local``), or
spread over Ray actors on one or many machines (``--executor ray``: ``ray_executor`` on the driver, ``ray_worker``
in each actor). Either way the driver writes every output and prints the same summary."""
