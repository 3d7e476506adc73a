package dev.outboxinbox.inbox;

/**
 * A message this consumer cannot read <em>yet</em>: the version of its event after the newest this
 * build reads, sent by a producer deployed before this consumer was upgraded (a decoder decides what
 * counts; the contract's {@code EventSchema} says the next version only, one step of a rolling deploy). It is not poison (an upgraded
 * instance reads it), so it is not dead-lettered: the transport holds it, unacked, and reads nothing
 * behind it on its queue (or partition), so that none of its aggregate's later events overtakes it,
 * until an instance that reads it takes the queue over (this one's replacement, in a rolling deploy).
 * Held longer than {@code inbox.hold-unreadable-for}, it is dead-lettered with this reason after all
 * and the queue is read on: a version nobody ever reads must not stop the queue for good.
 */
public class NotReadableYetException extends RejectedMessageException {

    public NotReadableYetException(String reason) {
        super(reason);
    }
}
