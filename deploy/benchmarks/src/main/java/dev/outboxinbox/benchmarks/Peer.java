package dev.outboxinbox.benchmarks;

/** A relay being measured: started as a process on its own slot, stopped again. */
interface Peer {

    String name();

    /** The replication slot it streams from. */
    String slot();

    /** Starts the process; returns at once (its start-up is part of a cold run). */
    void start() throws Exception;

    /** SIGTERM, and waits for it to end. */
    void stop() throws Exception;

    /** Its operating-system process id, while it runs. */
    long pid();

    /** Forgets where it was: its stored offsets (the slot is dropped by the caller). */
    void forgetOffsets() throws Exception;
}
