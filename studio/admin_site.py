"""The studio: a Django admin site branded for people who configure agents."""

from django.contrib import admin


class StudioAdminSite(admin.AdminSite):
    site_header = "Standard Agents Studio"
    site_title = "Agents Studio"
    index_title = "Configure agents, prompts and models"
