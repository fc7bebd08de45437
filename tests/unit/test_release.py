"""The one release sequence (`member/release.py`), as ZooKeeper's rebalancer runs it whole and
Kafka's coordination runs it around the generation's end."""

from __future__ import annotations

from zkconsumer.member.claims import Phase
from zkconsumer.member.release import Release, Told
from zkconsumer.member.state import Event, MemberState
from zkconsumer.model import TopicPartition

A, B = TopicPartition("t", 0), TopicPartition("t", 1)


class Recorder:
    """The fetch loop, recording what it is told into the journal."""

    def __init__(self, journal: list[str]) -> None:
        self.journal = journal

    def routing_changed(self) -> None:
        self.journal.append("routing changed")


def member_holding(*partitions: TopicPartition) -> MemberState:
    member = MemberState(1)
    member.start()
    member.begin_claims({tp: "c-0" for tp in partitions})
    member.claims_made(1, partitions, {})
    return member


def test_release_stops_delivery_commits_gives_back_then_drops_in_that_order():
    journal: list[str] = []
    member = member_holding(A, B)
    recorder = Recorder(journal)
    sequence = Release(member, recorder)

    def last_commit(partitions):
        phases = {member.claims[tp].phase for tp in partitions}
        journal.append(f"last commit while {sorted(p.value for p in phases)}")

    def give_back(partitions):
        journal.append(f"given back: {sorted(map(str, partitions))}")

    sequence.release({A: "c-0"}, last_commit, give_back)
    assert journal == ["routing changed", "last commit while ['releasing']",
                       "given back: ['t-0']"], "the fetch loop told once"
    assert set(member.claims) == {B}, "A's record dropped last, B's untouched"
    assert member.claims[B].phase is Phase.FETCHING


def test_a_term_that_ends_runs_the_sequence_around_its_end():
    journal: list[str] = []
    member = member_holding(A)
    recorder = Recorder(journal)
    sequence = Release(member, recorder)
    sequence.stop_delivery(member.owned())
    assert member.owned() == {} and member.claims[A].phase is Phase.RELEASING
    member.term_event(Event.TERM_ENDED, None)  # the term's end drops the records
    sequence.forget()
    assert journal == ["routing changed", "routing changed"]
    assert not member.claims


def test_what_the_application_was_told_outlives_the_term_and_is_told_back_once():
    """The worker kept what it told while its term was current; the term then ended (its
    records dropped): the record is still there for whoever tells the revocation, once."""
    member = member_holding(A, B)
    told = Told()
    assert told.keep(member.held(), lambda: True)
    member.term_event(Event.TERM_ENDED, None)
    assert member.held() == {}
    assert told.take() == {A: "c-0", B: "c-0"}
    assert told.take() == {}, "told of the revocation once"


def test_a_term_no_longer_current_is_not_kept_and_the_caller_tells_it_itself():
    """The term was taken back before the worker kept what it told: the one taking it back
    found nothing, so the worker hears False and tells the revocation."""
    told = Told()
    assert told.take() == {}  # the coordination thread, taking the term back first
    assert not told.keep({A: "c-0"}, lambda: False)
    assert told.take() == {}
