"""Request hygiene before any view runs."""

from django.http import HttpResponseBadRequest, JsonResponse


class RejectNulMiddleware:
    """A NUL character (``%00``) in the path or query string is a 400.

    No URL or parameter of tierlab has one, and PostgreSQL cannot even compare text with it:
    a lookup such as ``/api/v1/catalog/models/a%00b/`` would otherwise be a 500.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path or "%00" in request.META.get("QUERY_STRING", ""):
            message = "The URL contains a NUL character (%00)."
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": message}, status=400)
            return HttpResponseBadRequest(message)
        return self.get_response(request)
