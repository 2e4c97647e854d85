"""How long rows stay, and what keeps them: retention rules that retire expired Activity Log rows, and
legal holds that keep rows from being retired or erased; each change a signed record in the trail."""
