"""The one exception the engine raises for bad input."""


class ScenarioError(ValueError):
    """Bad input, naming the field at fault.

    ``field`` is a dotted path into the scenario JSON (``"training.global_batch_size"``);
    ``message`` says what is wrong and what would be accepted. ``str(err)`` is
    ``"<field>: <message>"``, which the REST API returns as a 400.
    """

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")
