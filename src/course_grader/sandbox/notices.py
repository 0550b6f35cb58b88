"""The notices that say a confined run is missing part of its confinement, as a type (``Weakening``).

A run's trusted processes report what they could not apply as lines of text (``Started.notices``
on the wire). The ones that mean a namespace, a hidden folder or a private /tmp is missing are
written here, once, from a ``Weakening`` member (``notice``), and read back by the same member
(``Weakening.of``): the grader refuses to run student code with any of them (``policy.weakened``).
Other notices (a compile cache not shared, an unconfined run's own) only inform.
"""

from __future__ import annotations

from course_grader.status import WordedEnum


class Weakening(WordedEnum):
    """A part of a confined run's confinement that could not be applied; the value opens its notice."""

    NO_MOUNT_NAMESPACE = "no mount namespace", "no mount namespace ({why})"
    NO_PID_NAMESPACE = "no PID namespace", "no PID namespace ({why})"
    NO_NETWORK_NAMESPACE = "no network namespace", "no network namespace ({why})"
    NO_IPC_NAMESPACE = "no IPC namespace", "no IPC namespace ({why})"
    NOT_HIDDEN = "could not hide", "could not hide {path}: {why}"
    NOT_PRIVATE = "could not make", "could not make {path} private: {why}"
    NOT_COVERED = "could not cover", "could not cover {path}: {why}"

    def notice(self, why: object, path: str = "") -> str:
        """The notice's text, as the run reports it."""
        return self.wording.format(path=path, why=why)

    @classmethod
    def of(cls, notice: str) -> Weakening | None:
        """The weakening a notice reports, or None for a notice that only informs."""
        return next((member for member in cls if notice.startswith(member.value)), None)
