package dev.outboxinbox.outbox;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/** The outbox is a library any producer uses as it is: no event and no domain class of this system. */
class OutboxArchitectureTest {

    private static final JavaClasses LIBRARY = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.outboxinbox.outbox");

    @Test
    void theLibraryKnowsNothingOfThisSystem() {
        assertThat(LIBRARY.stream().map(JavaClass::getSimpleName)).contains("OutboxWriter", "OutboxPurge", "OutboxSchema");
        noClasses().that().resideInAPackage("dev.outboxinbox.outbox..")
                .should().dependOnClassesThat(resideInAPackage("dev.outboxinbox..")
                        .and(not(resideInAPackage("dev.outboxinbox.outbox..")))
                        .and(not(resideInAPackage("dev.outboxinbox.retention.."))))
                .because("a producer's events are OutboxEvents (dev.outboxinbox.outbox.api); the library knows no event type")
                .check(LIBRARY);
    }
}
