-- Sessionising: each site sign-in opens a session for its user on its site; the session ends at
-- the user's first sign-out before their next sign-in (no sign-out: it timed out or is still
-- open). Views accessed are the user's hist_access_view events between sign-in and the end
-- (or the next sign-in when there was no sign-out).
{{ site_sessions() }}
