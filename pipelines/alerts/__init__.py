"""Detections delivered: each new row of ``gold.rpt_detections`` posted once to a webhook."""
