from django.contrib.admin.apps import AdminConfig


class StudioAdminConfig(AdminConfig):
    default_site = "studio.admin_site.StudioAdminSite"
