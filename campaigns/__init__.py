"""Campaigns, their email sequences, enrollments, suppressions and sending."""
