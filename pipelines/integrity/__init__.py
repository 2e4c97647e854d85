"""What shows the lake is whole: counts reconciled layer to layer."""
