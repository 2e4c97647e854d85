"""The analysts' side of the lake: masked copies of the gold marts (``publish``), and the Thrift
server that reads them and nothing else (``server``, started behind its boundary by ``launch``).
Auditors use the auditors' server over the lake itself (pipelines/serving/thrift.py)."""
